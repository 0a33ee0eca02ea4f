"""MLflow: installing the client where an image lacks it, a job's child run (sink, script runs), the
bake-off's parent run, and the local file store. MLflow is imported inside functions only, so
importing these modules costs nothing; MLflow being down never stops training (sink).
"""
