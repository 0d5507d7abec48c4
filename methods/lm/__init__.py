"""One language-model interface for the batch jobs that lean on an LLM: a `transformers`
causal LM by path or an OpenAI-compatible HTTP endpoint behind the same two calls
(`generate`, `logprob`), the small models this repo trains from scratch to stand in for
large ones, a local OpenAI-compatible server for them, and the MiniLM sentence encoder that
ships inside a package."""
