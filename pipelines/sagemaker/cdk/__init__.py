"""What a CDK construct in any language needs to deploy a compiled bake-off, with no Python at synth time:
`bakeoff synth --cdk-out DIR` writes the definition with placeholders, its assets and a manifest of what the
execution role and the people who start it need (cdk/construct reads it). Pure: no CDK import."""
