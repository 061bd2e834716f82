# schemas/: the JSON Schema of job.json (nothing to build). Its test checks the schema with
# python3-jsonschema against the reference recipes, contrib/ job files and tests/jobfiles/.
TESTS += tests/schema/test_schema.sh
