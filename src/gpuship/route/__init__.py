"""Route stage: which runner pools (or Kubernetes nodes) can run each image, before queueing."""
