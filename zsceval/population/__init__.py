"""Populations: policy pools (stacked same-spec members acting in one batched forward), partner sampling."""
