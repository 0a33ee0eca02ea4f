"""Advice before spending: the seeds a verdict needs (`seeds`, `rounds`), its cost (`budget`, `price_list`,
`price_class`) and where it can run (`regions`). Import the modules themselves: this package re-exports
nothing."""
