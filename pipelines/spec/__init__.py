"""The spec: its models (`model`, with `fields`, `legs` and `script`), where it comes from (`loader`,
`overrides`) and what it derives (`derived`). Import the modules themselves: this package re-exports nothing,
so importing one of them loads only what it needs."""
