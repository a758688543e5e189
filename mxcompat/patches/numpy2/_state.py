"""What the parts of the ``numpy2`` patch share: its name, and what it found when applied.

Plain module attributes, set by ``_on_apply`` in ``patches/numpy2/__init__.py`` and read on
every wrapped call (a module attribute is the cheapest thing to read there).
"""

PATCH = "numpy2"

on = False  # NumPy 2 is imported and the patch is applied: the fixes are needed
np = None  # the numpy module
tostring = None  # the ndarray view class that serves tostring (NumPy >= 2.3), or None
one_element = False  # NumPy refuses a scalar of a 1-element array (>= 2.4)
