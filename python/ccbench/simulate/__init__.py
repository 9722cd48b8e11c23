"""One scenario: run it in the core (:mod:`.api`), its Result and stored tables (:mod:`.results`),
its figures (:mod:`.plot`) and its page (:mod:`.page`)."""
