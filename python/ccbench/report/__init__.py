"""Reports of stored runs and suites: tables and pages (:mod:`.suite`), cross-run statistics and
figures, per-run plots of a suite (:mod:`.run_plots`) and compare's figure (:mod:`.compare`)."""
