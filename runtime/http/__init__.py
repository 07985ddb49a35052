"""The ``http`` handler kind: requests built from templates, sent with httpx.

::

    guard.py     which addresses may be reached (SSRF): resolve once, check every address
    request.py   the request from the handler's templates, the arguments and the secrets
    client.py    send it: connect to the checked address, follow redirects by hand,
                 total and idle timeouts, a response size limit
    lint.py      the checks run while the snapshot is built
"""
