#!/bin/bash
# One Kafka node, broker and controller in one JVM (KRaft), configured from the
# environment:
#
#   KAFKA_ADVERTISED_INTERNAL  host:port other containers use (default: <hostname>:9092)
#   KAFKA_ADVERTISED_EXTERNAL  host:port clients on the host use, i.e. where 9094 is
#                              published (default: 127.0.0.1:9094)
#   KAFKA_HEAP                 -Xmx (default 768m)
#   KAFKA_PROPERTY_<key>       any broker setting, dots written as underscores
#                              (KAFKA_PROPERTY_log_retention_hours=1)
#
# Single-node settings as under `make up` (deploy/local: srm_local/clusters.py):
# replication factor 1 everywhere, no auto-created topics. The first start writes a
# cluster id into the data volume and formats it; later starts reuse both.
set -euo pipefail

data=/var/lib/kafka/data
config=/var/lib/kafka/server.properties
internal=${KAFKA_ADVERTISED_INTERNAL:-$(hostname):9092}
external=${KAFKA_ADVERTISED_EXTERNAL:-127.0.0.1:9094}
classpath='/opt/kafka/libs/*'
logging=(-Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -Dkafka.logs.dir=/var/lib/kafka)

{
    echo "# written by /opt/kafka/entrypoint.sh at each start"
    echo "process.roles=broker,controller"
    echo "node.id=1"
    echo "listeners=INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:9094,CONTROLLER://127.0.0.1:9093"
    echo "advertised.listeners=INTERNAL://$internal,EXTERNAL://$external"
    echo "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
    echo "inter.broker.listener.name=INTERNAL"
    echo "controller.listener.names=CONTROLLER"
    echo "controller.quorum.voters=1@127.0.0.1:9093"
    echo "log.dirs=$data"
    echo "offsets.topic.replication.factor=1"
    echo "offsets.topic.num.partitions=5"
    echo "transaction.state.log.replication.factor=1"
    echo "transaction.state.log.min.isr=1"
    echo "transaction.state.log.num.partitions=5"
    echo "share.coordinator.state.topic.replication.factor=1"
    echo "share.coordinator.state.topic.min.isr=1"
    echo "group.initial.rebalance.delay.ms=0"
    echo "auto.create.topics.enable=false"
    echo "num.partitions=1"
    echo "default.replication.factor=1"
    echo "min.insync.replicas=1"
    for variable in $(compgen -e | grep '^KAFKA_PROPERTY_' || true); do
        key=${variable#KAFKA_PROPERTY_}
        echo "${key//_/.}=${!variable}"
    done
} >"$config"

if [[ ! -f $data/meta.properties ]]; then
    if [[ ! -f /var/lib/kafka/cluster.id ]]; then
        # A KRaft cluster id: 16 random bytes, URL-safe base64 without padding.
        head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=' >/var/lib/kafka/cluster.id
    fi
    echo "formatting $data for cluster $(cat /var/lib/kafka/cluster.id)"
    # One argument: an id may start with '-', which the tool would take for an option.
    java "${logging[@]}" -cp "$classpath" kafka.tools.StorageTool format \
        "--cluster-id=$(cat /var/lib/kafka/cluster.id)" -c "$config"
fi

exec java "-Xmx${KAFKA_HEAP:-768m}" -Xms256m -XX:+UseG1GC -Djava.awt.headless=true \
    "${logging[@]}" -cp "$classpath" kafka.Kafka "$config"
