"""A run on a host: a recipe's job sent to another machine over SSH, its job mirrored back here (`nullius host ...`).

- ssh.py: the system's `ssh` client, the host's key always checked, its refusals in plain words;
- probe.py: what the host has (python3, git, npm, docker, uv), and what a run there would lack;
- snapshot.py: the running Nullius (the core and the plugin distributions, source edits included) and the
  user catalogue, as one content-addressed tree, sent once into `~/.nullius/app/<content-id>`;
- handover.py: what the run gets over the launcher's stdin, in memory: the benchmark's licences that are
  set here, and the provider's key;
- remote.py: the program that runs on the host (its python3, the standard library alone): set up, launch, mirror, cancel;
- mirror.py: the job's files brought back into this machine's jobs folder, each whole;
- launch.py: `nullius host run`, start to end; command.py: the commands; calls.py: what the app's builder calls.
"""
