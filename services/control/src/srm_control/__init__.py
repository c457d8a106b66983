"""srm-control: SRM's command line, a client of the coordinators' and the gateway's HTTP APIs
and of the event logs (docs/control-path.md, "srm-control").

No module of this package holds state: :func:`srm_control.cli.main` parses one command
line, builds what the command needs (:class:`srm_control.sending.Sender`) and hands it in.
"""

PROG = "srm-control"
