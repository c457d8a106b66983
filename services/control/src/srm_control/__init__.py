"""srm-control: SRM's command line, a client of the coordinators' and the gateway's HTTP APIs
and of the event logs (docs/control-path.md, "srm-control")."""
