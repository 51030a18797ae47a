"""Rules added by later families are imported from here (kept empty until then)."""
from . import linalg  # noqa: F401
from . import numeric  # noqa: F401
