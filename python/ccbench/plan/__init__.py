"""Suites: the model and its planned runs (:mod:`.suite`), suite files (:mod:`.suite_file`), the
metric expressions (:mod:`.expr`), grid search (:mod:`.gridsearch`) and suite.json (:mod:`.manifest`)."""
