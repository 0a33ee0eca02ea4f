"""Orchestration examples: an Airflow DAG and a Step Functions + Lambda handler driving bakeoff's Python API."""
