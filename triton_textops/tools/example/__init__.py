"""The trained readability example: training and repository (:mod:`.readability`), its command
(``triton-textops example readability``, :mod:`.cli`) and ``triton-textops demo`` / ``make demo`` (:mod:`.demo`)."""
