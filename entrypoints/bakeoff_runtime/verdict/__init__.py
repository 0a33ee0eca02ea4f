"""The verdict: the job outputs read as records, the statistics, and the evaluation that decides.

numpy/scipy, no torch and no MLflow: the host imports these (the local engine decides rounds and
doomed legs with them) and the Evaluate step runs them.
"""
