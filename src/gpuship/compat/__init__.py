"""GPU compatibility: what an image needs from a GPU host, what a host has, and the verdict.

The shared core under the stages that ask "can this host run this image?": `verify` (one
host), `fleet` (every runner x every image), `route` (runner pools before the queue),
`audit` (the host readings) and `image` (the labels' reading). Values and functions on them:
image needs (`needs`), host readings and the audit document (`readings`, `container`,
`audit`), the requirements of the `verify:` section (`config`), the verdict (`verdict`,
`rule_ids`), the fleet grid (`fleet`), node regions (`regions`) and the matrix cell every
later command reads (`cell`). It imports no stage. All of it is pure but for three edges:
`audit` stamps an audit it assembles with this machine's hostname and the clock, `audit`
reads an audit file and `cell` a matrix file, both through `documents`' bounded reader.
"""
