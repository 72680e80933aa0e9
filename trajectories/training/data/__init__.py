"""Training data from daily dumps: conversations, their tokens, the problems of a split, DPO pairs, and the
tool schemas and system prompt a trained model sees."""
