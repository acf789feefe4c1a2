import numpy as np
import pandas as pd
import pytest
import torch

from lbee.scoring.classifier import load_classifier, predict_probabilities
from lbee.scoring.confidence import confidence_from_probabilities, scores_from_probabilities, scores_from_table


def test_confidence_kinds():
    p = np.array([[0.5, 0.5], [0.9, 0.1]])
    ent = confidence_from_probabilities(p)
    assert ent[0] == pytest.approx(-np.log(2)) and ent[1] > ent[0]
    assert confidence_from_probabilities(p, "max").tolist() == [0.5, 0.9]
    assert confidence_from_probabilities(p, "true_class", labels=[1, 1]).tolist() == [0.5, 0.1]
    with pytest.raises(ValueError, match="needs the true labels: a 'label' column in the predictions table"):
        confidence_from_probabilities(p, "true_class")  # describe has no --labels (sweep 32bb N5)
    with pytest.raises(ValueError, match="`confidence` must be one of"):
        confidence_from_probabilities(p, "margin")
    s = scores_from_probabilities(p, labels=[1, 0])
    assert s.performance.tolist() == [0.0, 1.0]  # argmax of a tie is class 0


def test_predictions_table():
    t = pd.DataFrame({"path": ["a.png", "b.png"], "prob_cat": [0.2, 0.7], "prob_dog": [0.8, 0.3], "label": [1, 1]})
    ids, s = scores_from_table(t)
    assert ids == ["a.png", "b.png"] and s.performance.tolist() == [1.0, 0.0]
    ids, s = scores_from_table(pd.DataFrame({"image": ["x"], "confidence": [0.3]}))
    assert s.confidence.tolist() == [0.3] and s.performance.tolist() == [0.3]
    with pytest.raises(ValueError, match="'confidence' column or class probability"):
        scores_from_table(pd.DataFrame({"path": ["x"], "score": [1]}))
    with pytest.raises(ValueError, match="image id column"):
        scores_from_table(pd.DataFrame({"confidence": [1.0]}))
    with pytest.raises(ValueError, match="NaN or inf"):
        scores_from_table(pd.DataFrame({"path": ["x", "y"], "confidence": [1.0, np.inf]}))


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 4)

    def forward(self, x):
        return self.fc(x.mean(dim=(2, 3)))


def tiny_factory():
    return Tiny()


def test_model_specs_run_on_images(tmp_path):
    from test_encoders_cache import write_images

    paths = write_images(tmp_path, 3)
    torch.manual_seed(0)
    ref = Tiny().eval()
    torch.save(ref.state_dict(), tmp_path / "w.pt")
    m = load_classifier("test_confidence_models:tiny_factory", str(tmp_path / "w.pt"))
    p1, ok = predict_probabilities(m, paths)
    assert p1.shape == (3, 4) and ok.all() and np.allclose(p1.sum(1), 1)
    torch.jit.script(ref).save(str(tmp_path / "m.ts"))
    p2, _ = predict_probabilities(load_classifier(str(tmp_path / "m.ts")), paths)
    assert np.allclose(p1, p2, atol=1e-6)
    tv = load_classifier("torchvision:resnet18", num_classes=5)
    assert predict_probabilities(tv, paths[:1], batch_size=1)[0].shape == (1, 5)
    with pytest.raises(ValueError, match="Unknown torchvision architecture"):
        load_classifier("torchvision:resnet999")
    with pytest.raises(ValueError, match="neither a file"):
        load_classifier("nonsense")
