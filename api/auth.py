"""Passwords (argon2 via argon2-cffi) and API tokens (random, stored as SHA-256)."""

from __future__ import annotations

import hashlib
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from api.db.models import ApiToken, User

_hasher = PasswordHasher()
TOKEN_PREFIX = "mr_"


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def check_password(user: User, password: str) -> bool:
    if not user.password_hash:
        return False
    try:
        return _hasher.verify(user.password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(db: Session, user: User, name: str = "") -> str:
    """Create a token for `user`; the plain token exists only in this return value."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    db.add(ApiToken(user_id=user.id, token_hash=token_hash(token), name=name))
    db.flush()
    return token


def user_for_token(db: Session, token: str) -> User | None:
    row = db.scalar(
        select(ApiToken).where(
            ApiToken.token_hash == token_hash(token), ApiToken.revoked.is_(False)
        )
    )
    return row.user if row else None


def user_for_login(db: Session, username: str, password: str) -> User | None:
    user = db.scalar(select(User).where(User.username == username))
    if user is None:
        _hasher.hash(password)  # same cost either way: no username probing by timing
        return None
    return user if check_password(user, password) else None
