"""The bottom layer: errors, input and result files, worker processes, and figure files.

The native simulator is ``ccbench._core`` beside this package (maturin builds it there).
"""
