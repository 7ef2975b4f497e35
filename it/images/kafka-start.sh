#!/bin/bash
# One Kafka node in KRaft mode (broker and controller in one JVM), on 127.0.0.1 only (the container
# runs on the host network). KAFKA_PORT and KAFKA_CONTROLLER_PORT choose the ports; the log directory
# is formatted on first start.
set -euo pipefail
: "${KAFKA_PORT:?set KAFKA_PORT}" "${KAFKA_CONTROLLER_PORT:?set KAFKA_CONTROLLER_PORT}"
LOG_DIR=${KAFKA_LOG_DIR:-/var/lib/kafka}
CP='/opt/kafka/libs/*'
mkdir -p "$LOG_DIR" /opt/kafka/config
cat > /opt/kafka/config/server.properties <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:${KAFKA_CONTROLLER_PORT}
listeners=PLAINTEXT://127.0.0.1:${KAFKA_PORT},CONTROLLER://127.0.0.1:${KAFKA_CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://127.0.0.1:${KAFKA_PORT}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=${LOG_DIR}
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
cat > /opt/kafka/config/log4j.properties <<PROPS
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=WARN
PROPS
JAVA_OPTS=(-Xmx512m -Dlog4j.configuration=file:/opt/kafka/config/log4j.properties)
if [ ! -f "$LOG_DIR/meta.properties" ]; then
  id=$(java "${JAVA_OPTS[@]}" -cp "$CP" kafka.tools.StorageTool random-uuid)
  java "${JAVA_OPTS[@]}" -cp "$CP" kafka.tools.StorageTool format -t "$id" -c /opt/kafka/config/server.properties
fi
exec java "${JAVA_OPTS[@]}" -cp "$CP" kafka.Kafka /opt/kafka/config/server.properties
