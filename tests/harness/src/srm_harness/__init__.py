"""The test harness over real clusters: test-support only, never installed by what
``make up`` runs nor by a container image (docs/testing.md, "The harness").

Nothing here fakes Kafka: every helper talks to a broker. The fakes of unit tests are
elsewhere (``srm_common.testing`` and one ``testing`` module per service).

    records        Record, RECENT_MS: what a user's client sees
    pool           ClusterPool: local clusters by alias, started on first use
    containers     ContainerPool: the same face, srm/kafka containers (testcontainers)
    clients        plain clients: create_topic, produce, consume_all, end_offsets, SteadyProducer
    compare        content, count_copy, copied: a topic against its copy
    waits          wait_until, wait_caught_up
    processes      DriverProcess, CoordinatorProcess, GatewayProcess; HTTP tokens of a run
    control        write_config, control_config; the event log's state; ControlGroup
    secured        SecuredPool: SASL_SSL, mutual TLS and ACLs on local clusters
    kdc, kerberized  an MIT KDC and GSSAPI clusters (KerberosPool)
    group_scenario numbered records, a consumer group's reads before and after a failover
    otlp_receiver  an OTLP/HTTP receiver for telemetry tests
"""
