"""A small Kafka protocol layer of the copy slot's own, for copying record batches as
they are (pass-through, ``docs/design.md`` section 3e): nothing in it decodes a record.

It speaks six requests, each at its newest non-flexible version (:mod:`.apis`), over one
connection per broker with several requests in flight. Bytes are copied as little as
Python allows: a request is a small header plus the batches' own buffers handed to one
``sendmsg``; an answer is received into one buffer and parsed with memoryviews, so a
fetched batch is a slice of the answer until it is sent again, and re-stamping it for
the copying producer writes a new 61-byte header beside it (:mod:`.batches`) instead of
copying it.

* :mod:`.primitives`: the wire's integers, strings and arrays (``Reader``, ``Writer``);
* :mod:`.apis`: the requests and versions spoken, and a broker's ranges checked;
* :mod:`.messages`: ApiVersions, Metadata, InitProducerId, ListOffsets;
* :mod:`.fetch`, :mod:`.produce`: the data requests and their answers;
* :mod:`.batches`: record batches found in a fetch and re-stamped (CRC-32C);
* :mod:`.connection`: one broker connection (framing, correlation ids, TLS);
* :mod:`.pump`: waiting on several connections from one thread;
* :mod:`.cluster`: bootstrap, metadata, leaders, a producer id;
* :mod:`.sasl`: PLAIN and SCRAM-SHA-256/512 logins;
* :mod:`.errors`: failures that name the broker and the Kafka error code.

Pure encode and decode (everything but ``connection``, ``pump`` and ``cluster``) is
tested without Kafka. TLS is an ``ssl.SSLContext`` on the socket. Not yet spoken: GSSAPI
and OAUTHBEARER logins, SASL re-authentication, fetch sessions, and leader moves beyond
raising the broker's error for the caller to refresh on (the batch unit looks a source
leader up again, and breaks on a target's: :mod:`srm_driver.copier.batch_unit`).
"""
