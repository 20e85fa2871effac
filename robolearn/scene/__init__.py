"""The task's MuJoCo model and its named entities: lookups (name -> ids), the entity types term
params are resolved to at build, and the Scene that builds the model and caches lookups."""
