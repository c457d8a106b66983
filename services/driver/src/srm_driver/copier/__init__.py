"""The Python copy slot: what runs inside Spark's Python workers, one long-lived task per
slot (started by :class:`srm_driver.copying.job.CopyJob`).

A slot asks the driver what to copy over the control channel
(:mod:`srm_driver.copying.protocol`) and runs, per flow, a *unit*: a librdkafka consumer
of the source and an idempotent producer to the target that stops at its first failure
(or, with ``srm.copy.batches``, the same unit passing whole batches through).
Records never leave the worker process that copies them. The parts:

* :mod:`~srm_driver.copier.control`: the slot's exchange with the driver (reports,
  answers, leases, starting and stopping units); :mod:`~srm_driver.copier.keep`: its
  leases kept while an answer is late;
* :mod:`~srm_driver.copier.unit`: one flow's copy loop (its lease, plans and failures);
* :mod:`~srm_driver.copier.assignment`: a unit's partitions, its consumer's assignment
  and what the driver has of them (delta reports);
* :mod:`~srm_driver.copier.sender`: records handed to a unit's producer, and its
  acknowledgements;
* :mod:`~srm_driver.copier.headers`: a copy's headers into a shared target;
* :mod:`~srm_driver.copier.producers`: one producer per codec, treated as one;
* :mod:`~srm_driver.copier.partition`: one upstream partition under one plan (what was
  sent and acknowledged, offset syncs, counters, the latency histogram);
* :mod:`~srm_driver.copier.plan`: a unit's plan, parsed from an answer;
* :mod:`~srm_driver.copier.lease`: until when a unit may hand records to its producer;
* :mod:`~srm_driver.copier.failures`: librdkafka's errors as the protocol's failure kinds;
* :mod:`~srm_driver.copier.clients`: the unit's clients from the answer's settings;
* :mod:`~srm_driver.copier.task`: the Spark task's entry point;
* :mod:`~srm_driver.copier.batch_unit`: a unit that passes whole record batches through
  (a flow's ``srm.copy.batches = true``), with :mod:`~srm_driver.copier.batch_rules`
  (which batches, what is done with each) and :mod:`~srm_driver.copier.batch_clients`
  (its clusters and producer id);
* :mod:`~srm_driver.copier.wire`: a small Kafka protocol layer of the slot's own, for
  copying record batches as they are (the batch unit's, and ``make bench --batch-copy``'s
  prototype; ``docs/design.md`` section 3e).
"""
