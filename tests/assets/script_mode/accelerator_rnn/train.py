"""A word-level LSTM language model in the style of pytorch/examples word_language_model/main.py,
written for bakeoff's tests: its device comes from `torch.accelerator` behind an `--accel` flag
(argparse `store_true`), and its weights are updated by hand (`p.data.add_`) unless
`--use-optimizer` is given. The corpus is synthetic (a fixed Markov chain over a small vocabulary)
so nothing is downloaded; `--seed` seeds the model and the batch order.
"""
import argparse
import math
import time

import torch
import torch.nn as nn

parser = argparse.ArgumentParser(description="Synthetic-corpus LSTM language model")
parser.add_argument("--emsize", type=int, default=16, help="size of word embeddings")
parser.add_argument("--nhid", type=int, default=16, help="number of hidden units per layer")
parser.add_argument("--nlayers", type=int, default=1, help="number of layers")
parser.add_argument("--lr", type=float, default=5.0, help="initial learning rate")
parser.add_argument("--clip", type=float, default=0.25, help="gradient clipping")
parser.add_argument("--epochs", type=int, default=2, help="upper epoch limit")
parser.add_argument("--batch_size", type=int, default=8, metavar="N", help="batch size")
parser.add_argument("--bptt", type=int, default=8, help="sequence length")
parser.add_argument("--seed", type=int, default=1111, help="random seed")
parser.add_argument("--log-interval", type=int, default=5, metavar="N", help="report interval")
parser.add_argument("--accel", action="store_true", help="Enables accelerated training")
parser.add_argument("--use-optimizer", action="store_true", help="Uses AdamW optimizer for gradient updating")
args = parser.parse_args()

torch.manual_seed(args.seed)

if args.accel and torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")

print("Using device:", device)

VOCAB = 40


def corpus(n_tokens):
    """The same tokens on every run: a fixed random transition table walked from token 0."""
    g = torch.Generator().manual_seed(4321)
    table = torch.softmax(torch.randn(VOCAB, VOCAB, generator=g) * 3, dim=1)
    out = torch.empty(n_tokens, dtype=torch.long)
    token = 0
    for i in range(n_tokens):
        token = int(torch.multinomial(table[token], 1, generator=g))
        out[i] = token
    return out


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


train_data = batchify(corpus(2400), args.batch_size)
val_data = batchify(corpus(600), 4)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return torch.log_softmax(self.decoder(output), dim=-1).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


model = RNNModel(VOCAB, args.emsize, args.nhid, args.nlayers).to(device)
criterion = nn.NLLLoss()
if args.use_optimizer:
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)


def repackage_hidden(h):
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def evaluate(data_source):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(4)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train(epoch, lr):
    model.train()
    total_loss = 0.0
    start_time = time.time()
    hidden = model.init_hidden(args.batch_size)
    # Whole windows only: every step has the same shapes.
    for batch, i in enumerate(range(0, train_data.size(0) - 1 - args.bptt, args.bptt)):
        data, targets = get_batch(train_data, i)
        if args.use_optimizer:
            optimizer.zero_grad()
        else:
            model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        if args.use_optimizer:
            optimizer.step()
        else:
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            elapsed = time.time() - start_time
            print("| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | "
                  "loss {:5.2f} | ppl {:8.2f}".format(epoch, batch, len(train_data) // args.bptt, lr,
                                                      elapsed * 1000 / args.log_interval, cur_loss,
                                                      math.exp(cur_loss)), flush=True)
            total_loss = 0
            start_time = time.time()


lr = args.lr
for epoch in range(1, args.epochs + 1):
    epoch_start_time = time.time()
    train(epoch, lr)
    val_loss = evaluate(val_data)
    print("-" * 89)
    print("| end of epoch {:3d} | time: {:5.2f}s | valid loss {:5.2f} | "
          "valid ppl {:8.2f}".format(epoch, (time.time() - epoch_start_time), val_loss, math.exp(val_loss)),
          flush=True)
    print("-" * 89)
