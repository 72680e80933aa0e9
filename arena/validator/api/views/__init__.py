"""The API's read side, below its routers and app: the view over the stores (``ArenaView`` and the routers'
dependencies), the response models and the metrics collectors."""
