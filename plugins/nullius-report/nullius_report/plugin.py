"""The report distribution's commands: `nullius compare`, `nullius export`, `nullius calibrate`."""

from __future__ import annotations

from nullius_core import hookimpl
from nullius_core.plugins import CommandRegistry

from nullius_report.cli import calibrate_group, compare_command, export_command


@hookimpl
def nullius_register_commands(registry: CommandRegistry) -> None:
    for command in (compare_command, export_command, calibrate_group):
        registry.add(command)
