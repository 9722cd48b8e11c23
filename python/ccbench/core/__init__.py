"""The bottom layer: errors, input and result files, worker processes, figure files and terminal consoles.

The native simulator is ``ccbench._core`` beside this package (maturin builds it there).
"""
