"""Talking to a Kubeflow Pipelines deployment: upload pipeline versions, start and follow runs.

Everything here goes through ``kfp.Client`` so that what the tests exercise is what
an operator's ``mlops upload`` / ``mlops submit`` sends to a cluster.
"""
