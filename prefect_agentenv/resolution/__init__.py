"""Resolution of ids to what serves them: env and agent ids to blocks or reference servers, roles to models.

Above ``blocks/`` (it loads them) and the reference catalogues, below ``steps/`` and ``commands/``
(which resolve ids). Nothing is imported here: ``validate`` and ``--help`` stay light, and each
module loads Prefect only when it asks for a block.
"""
