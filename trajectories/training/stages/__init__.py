"""The training stages: what they share (:mod:`stage`), SFT, rejection and teacher sampling over rollouts,
DPO, and GRPO with its rewards and tool environment. Each stage is one YAML config read into its class."""
