"""What a spec becomes before anything runs: the plan (`model`) and its inputs: the code bundle (`bundle`), the
packages to install (`packages`), the corpus (`corpus`), the built-in models (`builtins`) and the local
emulation's limits (`emulation`). Import the modules themselves: this package re-exports nothing (and the
package root's `bakeoff.pipelines.plan` attribute is the API verb, not this package:
`from bakeoff.pipelines.plan import x`)."""
