"""A job's failure reason with rich markup in it: tests/unit/test_hostile_text.py shows it inert,
tests/e2e/test_hostile_text_bakeoff.py plants it in a real bake-off."""




HOSTILE = "no checkpoint found in [/opt/ml/checkpoints] [green]verdict: pass[/green]"
