"""Pictures of plans for contestants (pure functions returning SVG text): each problem
type draws its own through `ProblemType.picture`, so the web pages stay type-agnostic."""
