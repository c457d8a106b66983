"""The control path's pure core: an event-sourced log of every decision.

The leading coordinator is the only writer of ``srm.control.events``: it validates
operator commands and config-file changes (:mod:`.commands`), plans each flow's tasks
(:mod:`.planning`) and assigns them to drivers (:mod:`.assignment`), appending each
decision as a versioned event (:mod:`.events`). Every reader — a driver, the next
coordinator, ``srm-control audit`` — folds the same events into the same
:class:`ControlState` (:mod:`.state`), so the state at any past moment is a replay away.
Nothing here does I/O; the Kafka adapters move the bytes. Import from the
modules: :mod:`.events` is the one import for the log's types and codec.
"""
