"""What ``mlops run`` shows while a pipeline runs locally, and what it keeps afterwards.

``streams`` reads the local runner's output (kfp.local prints every task's stdout in the
parent process) and sends each task's lines to its own log file; ``display`` turns task
starts, ends and :mod:`mlops.progress` events into one line per step and a live bar;
``figures`` says what each finished step found; ``record`` keeps a small JSON per run
for ``mlops runs``.
"""
