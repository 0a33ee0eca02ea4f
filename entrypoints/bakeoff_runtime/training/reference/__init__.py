"""The built-in reference trainer: a small decoder-only transformer LM on bytes."""
