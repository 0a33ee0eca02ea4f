"""Process and package helpers both sides use: dying with the parent, installing a package into a
job's own directory."""
