package nn

// BatchNorm is batch normalisation over the rows of a batch (Ioffe & Szegedy
// 2015), with learned per-feature Gamma and Beta and running statistics for
// evaluation.
type BatchNorm[T Float] struct {
	Gamma, Beta *Node[T]
}
