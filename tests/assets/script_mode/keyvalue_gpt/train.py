"""
A tiny character-level GPT trained in the style of Karpathy's nanoGPT train.py.
Config is module-level globals, overridden by configurator.py, e.g.
$ python train.py --batch_size=16 --max_iters=100 --device=cpu
Text: a fixed synthetic corpus (or $SM_CHANNEL_TRAINING/data.pt, a 1-D tensor
of token ids < 64); the final weights go to $SM_MODEL_DIR/model.pt.
"""
import math
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

# -----------------------------------------------------------------------------
# default config values
batch_size = 8
block_size = 32
n_layer = 2
n_head = 2
n_embd = 32
max_iters = 60
log_interval = 10
eval_interval = 20
eval_iters = 4
learning_rate = 1e-3
weight_decay = 1e-1
device = 'cuda' if torch.cuda.is_available() else 'cpu'
seed = 1337
weight_tying = True
out_dir = os.environ.get('SM_MODEL_DIR', 'out')
# -----------------------------------------------------------------------------
exec(open(os.path.join(os.path.dirname(__file__), 'configurator.py')).read())  # overrides from command line
# -----------------------------------------------------------------------------

torch.manual_seed(seed)

# data: a deterministic synthetic corpus, independent of the training seed
vocab_size = 64
channel = os.environ.get('SM_CHANNEL_TRAINING')
if channel and os.path.isfile(os.path.join(channel, 'data.pt')):
    data = torch.load(os.path.join(channel, 'data.pt')).long()
else:
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "pack", "my", "box", "with", "five", "dozen", "liquor", "jugs"]
    g = torch.Generator().manual_seed(1234)
    picks = torch.randint(len(words), (3000,), generator=g).tolist()
    text = ' '.join(words[i] for i in picks) + '.'
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]
batch_gen = torch.Generator().manual_seed(seed)


def get_batch(split):
    d = train_data if split == 'train' else val_data
    ix = torch.randint(len(d) - block_size, (batch_size,), generator=batch_gen)
    x = torch.stack([d[i:i + block_size] for i in ix])
    y = torch.stack([d[i + 1:i + 1 + block_size] for i in ix])
    return x.to(device), y.to(device)


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer('bias', torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        if weight_tying:
            self.tok_emb.weight = self.lm_head.weight  # https://paperswithcode.com/method/weight-tying
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            torch.nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), dtype=torch.long, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


model = GPT()
model.to(device)
print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e3:.1f}K", flush=True)
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=weight_decay)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ['train', 'val']:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            _, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


t0 = time.time()
for iter_num in range(max_iters + 1):
    if iter_num % eval_interval == 0 or iter_num == max_iters:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}", flush=True)
        t0 = time.time()
    if iter_num == max_iters:
        break
    X, Y = get_batch('train')
    logits, loss = model(X, Y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if (iter_num + 1) % log_interval == 0:
        lossf = loss.item()
        dt = (time.time() - t0) / log_interval
        print(f"iter {iter_num + 1}: loss {lossf:.4f}, time {dt * 1000:.2f}ms", flush=True)
        t0 = time.time()

os.makedirs(out_dir, exist_ok=True)
torch.save({k: v.cpu() for k, v in model.state_dict().items()}, os.path.join(out_dir, 'model.pt'))
print(f"saved model to {os.path.join(out_dir, 'model.pt')}", flush=True)
