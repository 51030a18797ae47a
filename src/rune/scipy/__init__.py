"""The SciPy surface (``scipy.special``, ``scipy.stats``, ``scipy.linalg``,
``scipy.signal``), built on primitives like :mod:`rune.numpy`.  SciPy is optional:
nothing here imports it until the user's code has.
"""
