"""Evidence read from other tools' files and stores: MLflow, TensorBoard, JUnit, traces."""
