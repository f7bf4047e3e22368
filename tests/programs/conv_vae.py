import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten


class Encoder(nn.Module):
    def __init__(self, num_latent_dims, image_shape, max_num_filters):
        super().__init__()
        num_filters_1 = max_num_filters // 2
        num_filters_2 = max_num_filters
        self.conv1 = nn.Conv2d(image_shape[-1], num_filters_1, 3, stride=2, padding=1, bias=False)
        self.conv2 = nn.Conv2d(num_filters_1, num_filters_2, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm(num_filters_1)
        self.bn2 = nn.BatchNorm(num_filters_2)
        output_shape = [num_filters_2] + [dim // 4 for dim in image_shape[:-1]]
        flattened_dim = 1
        for d in output_shape:
            flattened_dim *= d
        self.proj_mu = nn.Linear(flattened_dim, num_latent_dims)
        self.proj_log_var = nn.Linear(flattened_dim, num_latent_dims)

    def __call__(self, x):
        x = nn.leaky_relu(self.bn1(self.conv1(x)))
        x = nn.leaky_relu(self.bn2(self.conv2(x)))
        x = mx.flatten(x, 1)
        mu = self.proj_mu(x)
        logvar = self.proj_log_var(x)
        sigma = mx.exp(logvar * 0.5)
        eps = mx.random.normal(sigma.shape)
        z = eps * sigma + mu
        return z, mu, logvar


class UpsamplingConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=False)

    def __call__(self, x):
        return self.conv(nn.layers.upsample.upsample_nearest(x, (2, 2)))


class Decoder(nn.Module):
    def __init__(self, num_latent_dims, image_shape, max_num_filters):
        super().__init__()
        num_img_channels = image_shape[-1]
        self.max_num_filters = max_num_filters
        self.input_shape = [dim // 4 for dim in image_shape[:-1]] + [max_num_filters]
        flattened_dim = 1
        for d in self.input_shape:
            flattened_dim *= d
        self.lin1 = nn.Linear(num_latent_dims, flattened_dim, bias=False)
        self.bn1 = nn.BatchNorm(max_num_filters)
        self.upconv1 = UpsamplingConv2d(max_num_filters, max_num_filters // 2, 3, 1, 1)
        self.bn2 = nn.BatchNorm(max_num_filters // 2)
        self.upconv2 = nn.ConvTranspose2d(max_num_filters // 2, num_img_channels, 4, stride=2, padding=1)

    def __call__(self, z):
        x = self.lin1(z)
        x = x.reshape(-1, self.input_shape[0], self.input_shape[1], self.max_num_filters)
        x = nn.leaky_relu(self.bn1(x))
        x = nn.leaky_relu(self.bn2(self.upconv1(x)))
        return mx.sigmoid(self.upconv2(x))


class CVAE(nn.Module):
    def __init__(self, num_latent_dims, input_shape, max_num_filters):
        super().__init__()
        self.encoder = Encoder(num_latent_dims, input_shape, max_num_filters)
        self.decoder = Decoder(num_latent_dims, input_shape, max_num_filters)

    def __call__(self, x):
        z, mu, logvar = self.encoder(x)
        return self.decoder(z), mu, logvar

    def encode(self, x):
        return self.encoder(x)[0]

    def decode(self, z):
        return self.decoder(z)


def loss_fn(model, X):
    X_recon, mu, logvar = model(X)
    recon_loss = nn.losses.mse_loss(X_recon, X, reduction="sum")
    kl_div = -0.5 * mx.sum(1 + logvar - mu.square() - logvar.exp())
    return recon_loss + kl_div


mx.random.seed(0)
img_size = (12, 12, 1)
yy, xx = mx.meshgrid(mx.arange(12), mx.arange(12), indexing="ij")
centres = mx.random.randint(3, 9, (48, 2))
d2 = (yy[None] - centres[:, 0, None, None]) ** 2 + (xx[None] - centres[:, 1, None, None]) ** 2
images = mx.exp(-d2.astype(mx.float32) / 6.0)[..., None]
print("images", images.shape, f"{images.mean().item():.5f}")

model = CVAE(4, img_size, 8)
mx.eval(model.parameters())
print("params", sum(v.size for _, v in tree_flatten(model.trainable_parameters())))
optimizer = optim.AdamW(learning_rate=3e-3)
loss_and_grad_fn = nn.value_and_grad(model, loss_fn)
for epoch in range(3):
    model.train()
    perm = mx.random.permutation(images.shape[0])
    total = 0.0
    for s in range(0, 48, 16):
        X = images[perm[s : s + 16]]
        loss, grads = loss_and_grad_fn(model, X)
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state)
        total += loss.item()
    print(f"epoch {epoch} loss {total / 48:.4f}")

model.eval()
z = model.encode(images[:4])
recon = model.decode(z)
print("latent", z.shape, "recon", recon.shape, f"{mx.abs(recon - images[:4]).mean().item():.5f}")
samples = model.decode(mx.random.normal((3, 4)))
print("samples", samples.shape, f"{samples.mean().item():.5f}")
