"""The aggregator: the read side. Answers `rpc.aggregator.*` requests, always bounded to one organization."""
