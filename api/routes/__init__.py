"""One router per resource; each route parses, calls one function, shapes the answer."""
