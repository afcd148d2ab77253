"""A stand-in dependency: the sample's deps layer holds it."""

VERSION = "1.0.0"
