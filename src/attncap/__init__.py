"""attncap: re-deriving published claims about attention memorization capacity by computation."""
__version__ = "0.1.0"
