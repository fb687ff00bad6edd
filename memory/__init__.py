"""The actions layer: every act on the memory as one function, called by every interface (REST, the MCP
bridge through REST, the SDK, the admin, the command line, Celery beat). Each action calls the domain
services in order, inside its unit of work, and records its activity events:

- memory.store: store, store batch, extract (flux_extracts)
- memory.retrieval: retrieve, feedback (accept, record, apply what is pending)
- memory.forgetting: forget, purge, restore, expiry of restore data
- memory.dossier: a grain's detail and dossier
- memory.corrections: relations asserted by callers, an operator's corrections
- memory.dreaming: the dream cycle
- memory.upkeep: what beat runs (decay, clustering, the epistemic pass, health snapshots, embedding)
- memory.tasks: the Celery tasks, one per periodic action
"""
