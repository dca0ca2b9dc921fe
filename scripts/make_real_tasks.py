"""Build the real-data expert-advice tasks shipped in dp_experts_env/adversaries/data/.

Experts are eight online classifiers of scikit-learn, each trained prequentially on a stream of
a dataset bundled with scikit-learn (predict the next example, then learn it); the loss of
expert i in round t is 1 if it misclassified example t, else 0. The stream has a documented
change structure: the rows are shuffled once (seed 0) and cut into S + 1 equal segments; from
the second segment on, the features of each segment are permuted by a fixed random permutation
(seed 1), so what each classifier has learnt stops working at a known round (the "permuted
features" drift protocol). The comparator's switch budget is S (the number of changes).

Only this script needs scikit-learn (``pip install scikit-learn``); the suite reads the .npz
files with numpy alone. Run from the repository root:

    python scripts/make_real_tasks.py

Datasets (bundled with scikit-learn, BSD-3-Clause; the data themselves):
* digits: UCI "Optical Recognition of Handwritten Digits" (Alpaydin & Kaynak, 1998), the
  1,797-example test part scikit-learn ships; UCI licence CC BY 4.0.
* breast_cancer: UCI "Breast Cancer Wisconsin (Diagnostic)" (Wolberg, Street & Mangasarian,
  1995), 569 examples; UCI licence CC BY 4.0.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import Perceptron, SGDClassifier
from sklearn.naive_bayes import BernoulliNB, GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

OUT = Path(__file__).resolve().parents[1] / "dp_experts_env" / "adversaries" / "data"
#: task -> (loader, S: number of change points)
TASKS = {"digits": (load_digits, 4), "breast_cancer": (load_breast_cancer, 2)}


def experts() -> dict[str, object]:
    """The eight online classifiers (fixed seeds), in column order."""
    return {
        "perceptron": Perceptron(random_state=0),
        "sgd-hinge": SGDClassifier(loss="hinge", alpha=1e-4, random_state=0),
        "sgd-log": SGDClassifier(loss="log_loss", alpha=1e-3, random_state=0),
        "sgd-modified-huber": SGDClassifier(loss="modified_huber", alpha=1e-3, random_state=0),
        "sgd-hinge-strong-l2": SGDClassifier(loss="hinge", alpha=1e-1, random_state=0),
        "gaussian-nb": GaussianNB(),
        "bernoulli-nb": BernoulliNB(),
        "mlp-32": MLPClassifier(hidden_layer_sizes=(32,), learning_rate_init=0.01, random_state=0),
    }


def stream(task: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y, segment starts): shuffled rows, features permuted per segment after the first."""
    loader, s = TASKS[task]
    data = loader()
    x = StandardScaler().fit_transform(data.data.astype(np.float64))
    y = data.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(y))
    x, y = x[order], y[order]
    starts = np.linspace(0, len(y), s + 2).astype(np.int64)[:-1]
    perm_rng = np.random.default_rng(1)
    for j in range(1, s + 1):
        lo, hi = starts[j], starts[j + 1] if j + 1 <= s else len(y)
        x[lo:hi] = x[lo:hi][:, perm_rng.permutation(x.shape[1])]
    return x, y, starts


def losses(task: str) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(T, N) 0/1 mistakes of the experts, their names, the segment starts (0-based rows)."""
    x, y, starts = stream(task)
    models = experts()
    classes = np.unique(y)
    out = np.zeros((len(y), len(models)), dtype=np.uint8)
    for j, model in enumerate(models.values()):
        fitted = False
        for t in range(len(y)):
            # Warnings silenced: MLP's one-sample convergence notes, and Gaussian NB's zero
            # variances while a class has one example (its prediction is then class 0's).
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pred = model.predict(x[t : t + 1])[0] if fitted else classes[0]
                model.partial_fit(x[t : t + 1], y[t : t + 1], classes=classes)
            out[t, j] = pred != y[t]
            fitted = True
    return out, list(models), starts


def main() -> None:
    """Command line: write every task's .npz and print its error rates per segment."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for task, (_, s) in TASKS.items():
        matrix, names, starts = losses(task)
        path = args.out / f"{task}.npz"
        np.savez_compressed(
            path,
            losses=matrix,
            experts=np.array(names),
            segment_starts=starts,
            n_switches=np.int64(s),
            sklearn_version=np.array(sklearn.__version__),
        )
        rates = ", ".join(f"{n} {m:.3f}" for n, m in zip(names, matrix.mean(axis=0), strict=True))
        print(f"{path} ({path.stat().st_size} bytes): T={len(matrix)}, S={s}; error rates: {rates}")
        bounds = [*starts.tolist(), len(matrix)]
        for j in range(len(starts)):
            seg = matrix[bounds[j] : bounds[j + 1]].sum(axis=0)
            best, worst = names[seg.argmin()], names[seg.argmax()]
            print(
                f"  segment {j} rounds {bounds[j] + 1}-{bounds[j + 1]}: best {best} "
                f"({seg.min()} mistakes), worst {worst} ({seg.max()})"
            )


if __name__ == "__main__":
    main()
